"""Ours, not upstream: timm's `SqueezeExcite` and `DepthwiseSeparableConv` (timm 0.6, `efficientnet_blocks.py`) with
the arguments MaxViT's MBConv passes: a squeeze-excite of reduction 0.25 with a ReLU and a sigmoid gate; a depthwise
3 x 3 convolution, its norm and activation, a pointwise 1 x 1 convolution and its norm, plus the input where the
stride is 1 and the widths agree."""
from torch import nn

from .layers import DropPath


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, rd_ratio=0.25, rd_channels=None, act_layer=nn.ReLU, gate_layer=nn.Sigmoid,
                 force_act_layer=None, rd_round_fn=None):
        super().__init__()
        if rd_channels is None:
            rd_channels = round(in_chs * rd_ratio)
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1, bias=True)
        self.act1 = (force_act_layer or act_layer)(inplace=True)
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1, bias=True)
        self.gate = gate_layer()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        return x * self.gate(x_se)


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, dilation=1, group_size=1, pad_type='',
                 noskip=False, pw_kernel_size=1, pw_act=False, act_layer=nn.ReLU, norm_layer=nn.BatchNorm2d,
                 se_layer=None, drop_path_rate=0.):
        super().__init__()
        self.has_skip = (stride == 1 and in_chs == out_chs) and not noskip
        self.conv_dw = nn.Conv2d(in_chs, in_chs, dw_kernel_size, stride=stride, padding=dw_kernel_size // 2,
                                 dilation=dilation, groups=in_chs, bias=False)
        self.bn1 = norm_layer(in_chs)
        self.act1 = act_layer(inplace=True)
        self.se = se_layer(in_chs, act_layer=act_layer) if se_layer else nn.Identity()
        self.conv_pw = nn.Conv2d(in_chs, out_chs, pw_kernel_size, bias=False)
        self.bn2 = norm_layer(out_chs)
        self.act2 = act_layer(inplace=True) if pw_act else nn.Identity()
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.se(x)
        x = self.conv_pw(x)
        x = self.bn2(x)
        x = self.act2(x)
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x
